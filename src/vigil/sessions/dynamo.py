"""Sessions and their instructions on DynamoDB.

| record       | pk                          | sk                        |
| ------------ | --------------------------- | ------------------------- |
| session      | ``NS#<ns>#SESSION#<id>``    | ``SESSION``               |
| instruction  | ``NS#<ns>#SESSION#<id>``    | ``INSTR#<seq, 12 digits>``|
| list entry   | ``NS#<ns>#SESSIONS``        | ``SESSION#<id>``          |

A session and its instructions share a partition, so the open instructions after a number are
one consistent Query in number order. Attributes are split by who writes them, so that posting
and beating never overwrite each other: beats write the session's ``doc`` and ``version``;
posting writes only ``last_seq``, conditional on its old value, in the same transaction as
the new instruction. An instruction keeps what never changes in ``doc`` and what delivery and
acknowledgment change (``state``, ``delivery_count`` and their times) at the top level.

The list entry is written once, when the session is created, and holds nothing that changes:
listing reads the sessions themselves, so a beat writes one item, not two.
"""

from __future__ import annotations

import json
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s, epoch_ms, from_ms
from vigil.sessions.records import Instruction, Session
from vigil.sessions.store import SessionStore

_SEQ_DIGITS = 12
_LAST_SK = "INSTR#" + "9" * _SEQ_DIGITS
_SESSION_DOC_EXCLUDE = {"last_seq", "version"}
_INSTRUCTION_DOC = {"namespace", "session_id", "seq", "body", "posted_by", "posted_at"}


def _session_pk(namespace: str, session_id: str) -> dict[str, str]:
    return attr_s(f"NS#{namespace}#SESSION#{session_id}")


def _session_key(namespace: str, session_id: str) -> dict[str, Any]:
    return {"pk": _session_pk(namespace, session_id), "sk": attr_s("SESSION")}


def _list_pk(namespace: str) -> dict[str, str]:
    return attr_s(f"NS#{namespace}#SESSIONS")


def _instr_sk(seq: int) -> str:
    return f"INSTR#{seq:0{_SEQ_DIGITS}d}"


def _instr_key(namespace: str, session_id: str, seq: int) -> dict[str, Any]:
    return {"pk": _session_pk(namespace, session_id), "sk": attr_s(_instr_sk(seq))}


def _session(item: dict[str, Any]) -> Session:
    fields = json.loads(item["doc"]["S"])
    fields["last_seq"] = int(item["last_seq"]["N"])
    fields["version"] = int(item["version"]["N"])
    return Session.model_validate(fields)


def _instruction(item: dict[str, Any]) -> Instruction:
    fields = json.loads(item["doc"]["S"])
    fields["id"] = item["id"]["S"]
    fields["state"] = item["state"]["S"]
    fields["delivery_count"] = int(item["delivery_count"]["N"])
    for name in ("last_delivered_at", "acknowledged_at"):
        fields[name] = from_ms(item[name]) if name in item else None
    return Instruction.model_validate(fields)


class DynamoSessions(DynamoBase, SessionStore):
    def get_session(self, namespace: str, session_id: str) -> Session | None:
        key = _session_key(namespace, session_id)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return _session(item) if item else None

    # -- beats ----------------------------------------------------------------------------
    def _session_writes(self, session: Session) -> list[dict[str, Any]]:
        key = _session_key(session.namespace, session.session_id)
        doc = attr_s(session.model_dump_json(exclude=_SESSION_DOC_EXCLUDE))
        if session.version == 1:
            entry = {
                "pk": _list_pk(session.namespace),
                "sk": attr_s(f"SESSION#{session.session_id}"),
                "owner": attr_s(session.owner),
            }
            return [
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": {
                            **key,
                            "owner": attr_s(session.owner),
                            "doc": doc,
                            "version": attr_n(1),
                            "last_seq": attr_n(0),
                        },
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {"Put": {"TableName": self.table, "Item": entry}},
            ]
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key,
                    "UpdateExpression": "SET doc = :doc, version = :version",
                    "ConditionExpression": "version = :expected",
                    "ExpressionAttributeValues": {
                        ":doc": doc,
                        ":version": attr_n(session.version),
                        ":expected": attr_n(session.version - 1),
                    },
                }
            }
        ]

    def _acknowledgment(self, instruction: Instruction) -> dict[str, Any]:
        assert instruction.acknowledged_at is not None
        return {
            "Update": {
                "TableName": self.table,
                "Key": _instr_key(instruction.namespace, instruction.session_id, instruction.seq),
                "UpdateExpression": "SET #st = :acked, acknowledged_at = :at",
                "ConditionExpression": "#st = :delivered AND id = :id",
                "ExpressionAttributeNames": {"#st": "state"},
                "ExpressionAttributeValues": {
                    ":acked": attr_s("acknowledged"),
                    ":delivered": attr_s("delivered"),
                    ":at": attr_n(epoch_ms(instruction.acknowledged_at)),
                    ":id": attr_s(instruction.id),
                },
            }
        }

    def _delivery(self, instruction: Instruction) -> dict[str, Any]:
        assert instruction.last_delivered_at is not None
        return {
            "Update": {
                "TableName": self.table,
                "Key": _instr_key(instruction.namespace, instruction.session_id, instruction.seq),
                "UpdateExpression": "SET #st = :state, delivery_count = :count, "
                "last_delivered_at = :at",
                "ConditionExpression": "delivery_count = :previous AND #st <> :acked AND id = :id",
                "ExpressionAttributeNames": {"#st": "state"},
                "ExpressionAttributeValues": {
                    ":state": attr_s(instruction.state),
                    ":count": attr_n(instruction.delivery_count),
                    ":previous": attr_n(instruction.delivery_count - 1),
                    ":acked": attr_s("acknowledged"),
                    ":at": attr_n(epoch_ms(instruction.last_delivered_at)),
                    ":id": attr_s(instruction.id),
                },
            }
        }

    def save_beat(
        self, session: Session, delivered: list[Instruction], acknowledged: list[Instruction]
    ) -> DynamoWrite:
        # Acknowledgments can only be repeated, never undone: a beat too large for one
        # transaction applies them ahead of the rest.
        return DynamoWrite(
            items=[*self._session_writes(session), *(self._delivery(i) for i in delivered)],
            ahead=[self._acknowledgment(i) for i in acknowledged],
        )

    # -- posting --------------------------------------------------------------------------
    def save_instruction(self, instruction: Instruction) -> DynamoWrite:
        item = {
            **_instr_key(instruction.namespace, instruction.session_id, instruction.seq),
            "id": attr_s(instruction.id),
            "state": attr_s(instruction.state),
            "delivery_count": attr_n(instruction.delivery_count),
            "doc": attr_s(instruction.model_dump_json(include=_INSTRUCTION_DOC)),
        }
        writes: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _session_key(instruction.namespace, instruction.session_id),
                    "UpdateExpression": "SET last_seq = :seq",
                    "ConditionExpression": "last_seq = :previous",
                    "ExpressionAttributeValues": {
                        ":seq": attr_n(instruction.seq),
                        ":previous": attr_n(instruction.seq - 1),
                    },
                }
            },
            {
                "Put": {
                    "TableName": self.table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        return DynamoWrite(writes)

    # -- reading --------------------------------------------------------------------------
    def get_instructions(
        self, namespace: str, session_id: str, seqs: list[int]
    ) -> list[Instruction]:
        keys = [_instr_key(namespace, session_id, seq) for seq in sorted(set(seqs))]
        found = [_instruction(item) for item in self._batch_get(keys)]
        return sorted(found, key=lambda i: i.seq)

    def open_instructions(
        self, namespace: str, session_id: str, after: int, through: int, limit: int
    ) -> list[Instruction]:
        if after >= through:
            return []
        request = {
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "FilterExpression": "#st <> :acked",
            "ExpressionAttributeNames": {"#st": "state"},
            "ExpressionAttributeValues": {
                ":pk": _session_pk(namespace, session_id),
                ":first": attr_s(_instr_sk(after + 1)),
                ":last": attr_s(_instr_sk(through)),
                ":acked": attr_s("acknowledged"),
            },
            "Limit": limit,
            "ConsistentRead": True,
        }
        found: list[Instruction] = []
        for page in self._pages(request):
            found += [_instruction(i) for i in page.get("Items", [])]
            if len(found) >= limit:
                break
        return found[:limit]

    def list_instructions(
        self, namespace: str, session_id: str, after: int, limit: int
    ) -> list[Instruction]:
        response = self._call(
            self.client.query,
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={
                ":pk": _session_pk(namespace, session_id),
                ":first": attr_s(_instr_sk(after + 1)),
                ":last": attr_s(_LAST_SK),
            },
            Limit=limit,
            ConsistentRead=True,
        )
        return [_instruction(i) for i in response.get("Items", [])]

    def list_sessions(self, namespace: str, after: str | None, limit: int) -> list[Session]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": _list_pk(namespace),
                ":prefix": attr_s("SESSION#"),
            },
            "Limit": limit,
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                "pk": _list_pk(namespace),
                "sk": attr_s(f"SESSION#{after}"),
            }
        entries = self._call(self.client.query, **request).get("Items", [])
        ids = [entry["sk"]["S"].removeprefix("SESSION#") for entry in entries]
        if not ids:
            return []
        items = self._batch_get([_session_key(namespace, sid) for sid in ids])
        return sorted((_session(item) for item in items), key=lambda s: s.session_id)
