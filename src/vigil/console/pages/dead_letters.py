"""Dead letters, for operators: how many timers each of the deployment's dead-letter queues
holds, and the button that sends the operator's namespace's timers in one of them back to the
queue that serves them (vigil.alarms.redrive), recorded in the audit trail."""

from __future__ import annotations

from collections.abc import Mapping

from vigil.alarms.redrive import DEAD_LETTER_QUEUES, DeadLetters, Outcome
from vigil.audit.records import AuditEvent
from vigil.console.components import counted, facts, problem, table
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.kit.tooling import OPERATORS
from vigil.observability import get_logger, log_event

log = get_logger("vigil.console")

HERE = f"{PREFIX}/dead-letters"
SEND_BACK = f"{HERE}/send-back"
# A click looks at this many messages of a queue at most, well within the function's timeout;
# a deeper queue takes more clicks (or the deployer's `vigil redrive`).
PER_CLICK = 100

EXPLAINED = Html(
    '<p class="hint">A timer lands in a dead-letter queue when its handler failed ten times over '
    "some minutes, or when the Scheduler could not hand it to its function. There it waits, up "
    "to 14 days, and nothing it was for happens. Sending it back is safe once the cause is "
    "fixed: every timer's handler does its work once, however often the timer comes. The counts "
    "are the whole deployment's; Send back sends only your namespace's timers, each to the "
    "queue that serves its kind today, and leaves the rest for the deployer's "
    "<code>vigil redrive</code>.</p>"
)


def dead_letters(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    queues = _queues(responder, visit)
    if isinstance(queues, HttpResponse):
        return queues
    return responder.page("Dead letters", join([EXPLAINED, _listing(queues, visit)]), visit)


def send_back(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Sends back the namespace's timers in the queue the form names, up to PER_CLICK of its
    messages; the page says what moved and what is left. The moves are recorded after they
    are made, as SQS is outside the table's transactions: a trail that cannot be written
    fails the page, and the timers stay sent back."""
    queues = _queues(responder, visit)
    if isinstance(queues, HttpResponse):
        return queues
    queue = form.get("queue", "")
    if queue not in DEAD_LETTER_QUEUES:
        return responder.refused(404, "There is no such dead-letter queue.", visit)
    principal = visit.principal
    outcome = queues.send_back(queue, limit=PER_CLICK, namespace=principal.namespace)
    if outcome.moved_count:
        store = responder.app.store
        event = AuditEvent.of(
            principal.namespace,
            principal.id,
            "redrive",
            "queue",
            queue,
            None,
            None,
            responder.now(),
        )
        store.commit([store.add_audit_event(event)])
    log_event(log, "dead letters sent back", queue=queue, moved=outcome.moved_count)
    body = join(
        [
            _said(outcome),
            EXPLAINED,
            _listing(queues, visit),
        ]
    )
    return responder.page(f"Sent back from {queue}", body, visit, here=HERE)


def _queues(responder: Responder, visit: Visit) -> DeadLetters | HttpResponse:
    """The dead-letter queues, for an operator; for anyone else, or where the console is given
    none, the page that says so."""
    if visit.principal.role not in OPERATORS:
        return responder.refused(403, "Only operators may see the dead-letter queues.", visit)
    queues = responder.dead_letters()
    if queues is None:
        return responder.page(
            "Dead letters",
            problem("This deployment gives the console no dead-letter queues to read."),
            visit,
            status=404,
        )
    return queues


def _listing(queues: DeadLetters, visit: Visit) -> Html:
    depths = queues.depths()
    rows = [
        [
            # A queue's name is copied whole, into a command or AWS's console: never broken.
            Html(f'<code class="id">{name}</code>'),
            holds,
            render('<span class="count" id="dead-{name}">{n}</span>', name=name, n=depths[name]),
            _form(name, visit.csrf) if depths[name] else "—",
        ]
        for name, holds in DEAD_LETTER_QUEUES.items()
    ]
    return table(
        "Dead-letter queues of timers",
        ("Queue", "What it holds", "Messages", "Your timers"),
        rows,
        "There are no dead-letter queues.",
        "dead-letter-queues",
    )


def _form(queue: str, csrf: str) -> Html:
    return render(
        '<form method="post" action="{action}" class="inline">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="queue" value="{queue}">'
        '<button type="submit" aria-label="Send back from {queue}">Send back</button></form>',
        action=SEND_BACK,
        csrf=csrf,
        queue=queue,
    )


def _said(outcome: Outcome) -> Html:
    moved = join(
        (
            render("{n} to <code>{queue}</code>", n=n, queue=queue)
            for queue, n in sorted(outcome.moved.items())
        ),
        ", ",
    )
    pairs: list[tuple[str, object]] = [
        ("Sent back", moved if outcome.moved_count else "none of your namespace's timers"),
        ("Left in the queue", f"{outcome.left} {counted(outcome.left, 'message', 'messages')}"),
    ]
    if outcome.others or outcome.kept:
        pairs.append(
            (
                "Not yours to send",
                f"{outcome.others + len(outcome.kept)} seen: other namespaces' timers, or "
                "messages that are no timer (the deployer's vigil redrive lists them)",
            )
        )
    if outcome.failed:
        pairs.append(("Not taken", f"{outcome.failed}: SQS refused them; send back again"))
    return facts(pairs)
