"""Linking a person's account on a surface (a Slack user, an email address) to their Vigil
principal, once, from the console.

Whoever meets a surface unlinked (a Slack user's first click, an email to an address nobody has
claimed) is given a console link carrying a signed token that names the account; the person
opens it, signs in, and confirms: the account is then theirs (``ChannelStore.link_account``, a
conditional write: the first person to confirm keeps it). The token proves only that its holder
received it on that surface; the sign-in proves who they are.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import get_args
from urllib.parse import urlencode

from vigil.audit.records import AuditEvent
from vigil.kit.keys import Keys
from vigil.kit.tokens import open_token, sign_token
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.notifications.records import AccountLink, AccountSurface
from vigil.notifications.store import AccountPorts

TOKEN_PURPOSE = "account-link"  # noqa: S105 - names a key, is none
LINK_LIFETIME = timedelta(hours=24)
LINK_PATH = "/console/link"


def link_url(
    keys: Keys,
    console_base: str,
    namespace: str,
    surface: AccountSurface,
    account: str,
    now: datetime,
) -> str:
    """The console link that lets the person who receives it link ``account`` to themselves."""
    ends = int((now + LINK_LIFETIME).timestamp())
    token = sign_token(keys, TOKEN_PURPOSE, [namespace, surface, account, ends])
    return f"{console_base.rstrip('/')}{LINK_PATH}?{urlencode({'token': token})}"


def opened_link(keys: Keys, token: str, now: datetime) -> tuple[str, AccountSurface, str] | None:
    """``(namespace, surface, account)`` a link's token names, if it is ours and current."""
    fields = open_token(keys, TOKEN_PURPOSE, token)
    if fields is None or len(fields) != 4:
        return None
    namespace, surface, account, ends = fields
    if surface not in get_args(AccountSurface) or not isinstance(ends, int):
        return None
    if now.timestamp() >= ends:
        return None
    return str(namespace), surface, str(account)


def link_account(store: AccountPorts, link: AccountLink) -> str:
    """Links the account to ``link.principal_id``, audited in the same commit (the account
    then decides as that person); the principal it is linked to now: that one, or whoever
    linked it first (a link is never moved; an operator may end it, ``unlink_account``)."""
    event = AuditEvent.of(
        link.namespace,
        link.principal_id,
        "link_account",
        "account",
        f"{link.surface}:{link.account}"[:200],
        None,
        None,
        link.linked_at,
        via="console",
    )
    try:
        UnitOfWork(store).commit(store.link_account(link), store.add_audit_event(event))
    except ConditionFailed:
        linked = store.linked_account(link.namespace, link.surface, link.account)
        if linked is None:  # unlinked meanwhile: this link may be the next
            return link_account(store, link)
        return linked
    return link.principal_id


def unlink_account(
    store: AccountPorts,
    namespace: str,
    surface: AccountSurface,
    account: str,
    principal_id: str,
    by: str,
    now: datetime,
) -> bool:
    """An operator's power: ends the account's link to ``principal_id`` (whom the operator
    was shown), audited in the same commit, so that the account decides as nobody until a
    person links it again; False, changing nothing, if it is not linked to that principal."""
    event = AuditEvent.of(
        namespace,
        by,
        "unlink_account",
        "account",
        f"{surface}:{account}"[:200],
        None,
        None,
        now,
        via="console",
    )
    try:
        unlinked = store.unlink_account(namespace, surface, account, principal_id)
        UnitOfWork(store).commit(unlinked, store.add_audit_event(event))
    except ConditionFailed:
        return False
    return True
