"""DynamoDB's TTL, played locally from what is about to expire, not by scanning the table.

DynamoDB deletes an item some time after the epoch seconds in its table's TTL attribute have
passed. DynamoDB Local does so only in tables without a global secondary index (ours has one)
and moto never does, so the runtime plays it, on its own clock. A scan of the table for
expired items costs in proportion to the table (86 ms a page of 1,000 items at +100k, a page
a second); this costs in proportion to the items that are due.

- **An index of when each item needs a look** (``ExpiryIndex``, SQLite beside the engine's
  database): one row per item of a watched table, due no later than the item's TTL. The
  DynamoDB front, which sees every write, marks the row of each item a write gives a TTL
  (``expiry_marks``) before it forwards the write, and holds the row back from the sweep until
  the engine has answered: a sweep never looks at an item under a write that has not landed.
  A row due earlier than its item's TTL costs one look, never a wrong deletion, so an
  ``UpdateItem`` that changes the TTL other than by ``SET <ttl> = :value`` is due at once, and
  rows only ever move earlier, whatever order concurrent writes are marked in. A deletion
  marks nothing: its row comes due and finds nothing to delete. A PartiQL write, whose items
  the front does not read, asks for a scan of every watched table.
- **The sweep** (``vigil.local.expiry_sweep``, on the event pump's thread and clock) takes
  the rows due, a batch a pass, and deletes each item on the condition that its TTL has
  passed, as DynamoDB does. A failed condition returns the item as it now is: a later TTL
  becomes the row's due time, no TTL ends the row. The row is changed only if no write marked
  it meanwhile.
- **Complete across restarts**: every mark is committed before its write goes to the engine.
  A front that starts clears what an earlier one left in flight (its row was marked before the
  write, so it is due in time whatever became of the write). A table watched for the first
  time, or with another TTL attribute or key, is scanned once, a page at a time, into the index.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

INDEX_FILE = "expiry.sqlite3"
# Operations that may give an item a TTL; every other one leaves the index as it is.
WRITES = frozenset(
    {
        "PutItem",
        "UpdateItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "ExecuteStatement",
        "BatchExecuteStatement",
        "ExecuteTransaction",
    }
)
_CLAUSES = frozenset({"SET", "REMOVE", "ADD", "DELETE"})
_TOKEN = re.compile(r"[#:]?\w+|\S")
_FOREVER = 2**62

_SCHEMA = """
CREATE TABLE IF NOT EXISTS watched_tables (
    table_name TEXT PRIMARY KEY,
    attribute TEXT NOT NULL,
    key_names TEXT NOT NULL,
    scans_wanted INTEGER NOT NULL,
    scans_done INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS expiring_items (
    table_name TEXT NOT NULL,
    item_key TEXT NOT NULL,
    check_at INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    in_flight INTEGER NOT NULL,
    PRIMARY KEY (table_name, item_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS expiring_items_by_time ON expiring_items (check_at);
"""


@dataclass(frozen=True)
class Watched:
    """A table whose TTL is played: the attribute TTL reads, and the table's key."""

    attribute: str
    key_names: tuple[str, ...]


@dataclass
class Marks:
    """What one write request tells the index: (table, item key, due at) for each item it
    gives a TTL, and whether it wrote items the front cannot read (PartiQL)."""

    items: list[tuple[str, str, int]] = field(default_factory=list)
    rescan: bool = False


@dataclass(frozen=True)
class DueItem:
    table: str
    item_key: str
    check_at: int
    writes: int

    @property
    def key(self) -> dict[str, Any]:
        key: dict[str, Any] = json.loads(self.item_key)
        return key


def item_key(item: Mapping[str, Any], key_names: Sequence[str]) -> str | None:
    """The index's name for an item: its key attributes as canonical JSON."""
    if not all(name in item for name in key_names):
        return None
    return json.dumps({name: item[name] for name in key_names}, sort_keys=True)


def due_at(value: Any) -> int | None:
    """The epoch second from which a TTL attribute's value has passed; None when TTL ignores
    the value (not a number)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("N"), str):
        return None
    try:
        second = math.floor(Decimal(value["N"]))
    except (InvalidOperation, OverflowError, ValueError):
        return None
    # SQLite holds 64 bits; a TTL beyond is as good as never.
    return max(-_FOREVER, min(_FOREVER, second))


def expiry_marks(
    operation: str, request: Mapping[str, Any], watched: Callable[[str], Watched | None]
) -> Marks:
    """What a write request (``operation`` is its X-Amz-Target's action) does to the index."""
    marks = Marks()

    def put(table: Any, item: Any) -> None:
        config = watched(table) if isinstance(table, str) else None
        if config is None or not isinstance(item, Mapping):
            return
        key, due = item_key(item, config.key_names), due_at(item.get(config.attribute))
        if key is not None and due is not None:
            marks.items.append((table, key, due))

    def update(table: Any, request: Mapping[str, Any]) -> None:
        config = watched(table) if isinstance(table, str) else None
        key = request.get("Key")
        if config is None or not isinstance(key, Mapping):
            return
        due = _updated_ttl(request, config.attribute)
        name = item_key(key, config.key_names)
        if due is not None and name is not None:
            marks.items.append((table, name, due))

    if operation == "PutItem":
        put(request.get("TableName"), request.get("Item"))
    elif operation == "UpdateItem":
        update(request.get("TableName"), request)
    elif operation == "BatchWriteItem":
        for table, writes in (request.get("RequestItems") or {}).items():
            for write in writes if isinstance(writes, list) else []:
                put(table, (write.get("PutRequest") or {}).get("Item"))
    elif operation == "TransactWriteItems":
        for action in request.get("TransactItems") or []:
            if "Put" in action:
                put(action["Put"].get("TableName"), action["Put"].get("Item"))
            elif "Update" in action:
                update(action["Update"].get("TableName"), action["Update"])
    elif operation in WRITES:
        statements = [
            request,
            *request.get("Statements", []),
            *request.get("TransactStatements", []),
        ]
        marks.rescan = any(
            "Statement" in s and not str(s["Statement"]).lstrip().upper().startswith("SELECT")
            for s in statements
        )
    return marks


def _updated_ttl(request: Mapping[str, Any], attribute: str) -> int | None:
    """The TTL an ``UpdateItem`` leaves: None when it does not touch it (or sets what TTL
    ignores), its value for ``SET <ttl> = :value``, and 0 (look at once) for any other change."""
    expression = request.get("UpdateExpression")
    if not isinstance(expression, str):
        return 0 if attribute in (request.get("AttributeUpdates") or {}) else None
    names = request.get("ExpressionAttributeNames") or {}
    tokens = _TOKEN.findall(expression)
    places = [i for i, token in enumerate(tokens) if names.get(token, token) == attribute]
    if not places:
        return None
    [place, *others] = places
    clause = next((t.upper() for t in reversed(tokens[:place]) if t.upper() in _CLAUSES), None)
    before = tokens[place - 1].upper() if place else ""
    after = tokens[place + 1 : place + 4]
    assigned = (
        not others
        and clause == "SET"
        and before in {"SET", ","}
        and len(after) >= 2
        and after[0] == "="
        and after[1].startswith(":")
        and (len(after) == 2 or after[2] == "," or after[2].upper() in _CLAUSES)
    )
    if not assigned:
        return 0
    return due_at((request.get("ExpressionAttributeValues") or {}).get(after[1]))


class ExpiryIndex:
    """The index, shared through its file by the front (which marks) and the sweep."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(
            path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.Lock()
        self._watched: dict[str, Watched] = {}
        with self._lock:
            # WAL: the sweep reads while the front writes. NORMAL: a commit survives the
            # process being killed, which is what a restart must not lose.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # ---------------------------------------------------------------- what is watched

    def watch(self, tables: Mapping[str, Watched]) -> None:
        """Watches exactly ``tables``; one new or changed is scanned once into the index."""
        with self._transaction() as db:
            rows = db.execute("SELECT table_name, attribute, key_names FROM watched_tables")
            current = {name: Watched(a, tuple(json.loads(k))) for name, a, k in rows.fetchall()}
            for name in current.keys() - tables.keys():
                db.execute("DELETE FROM watched_tables WHERE table_name = ?", (name,))
                db.execute("DELETE FROM expiring_items WHERE table_name = ?", (name,))
            for name, config in tables.items():
                if current.get(name) == config:
                    continue
                db.execute(
                    "INSERT INTO watched_tables VALUES (?, ?, ?, 1, 0) ON CONFLICT (table_name)"
                    " DO UPDATE SET attribute = excluded.attribute,"
                    " key_names = excluded.key_names, scans_wanted = scans_wanted + 1",
                    (name, config.attribute, json.dumps(list(config.key_names))),
                )
        self._watched.clear()

    def watched(self, table: str) -> Watched | None:
        config = self._watched.get(table)
        if config is None:
            with self._lock:
                row = self._db.execute(
                    "SELECT attribute, key_names FROM watched_tables WHERE table_name = ?",
                    (table,),
                ).fetchone()
            if row is None:
                return None
            config = self._watched[table] = Watched(row[0], tuple(json.loads(row[1])))
        return config

    # ---------------------------------------------------------------- the front's marks

    def recovered(self) -> None:
        """Forgets the writes an earlier front left in flight: none of them is any more."""
        with self._transaction() as db:
            db.execute("UPDATE expiring_items SET in_flight = 0 WHERE in_flight > 0")

    @contextlib.contextmanager
    def writing(self, marks: Marks) -> Iterator[None]:
        """Marks a write's items before it goes to the engine, and holds their rows back
        from the sweep until it has come back, whatever it answered."""
        if not marks.items and not marks.rescan:
            yield
            return
        self._mark(marks, in_flight=1)
        try:
            yield
        finally:
            self._land(marks)

    def _mark(self, marks: Marks, in_flight: int) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO expiring_items VALUES (?, ?, ?, 1, ?)"
                " ON CONFLICT (table_name, item_key) DO UPDATE SET"
                " check_at = min(check_at, excluded.check_at), writes = writes + 1,"
                " in_flight = in_flight + excluded.in_flight",
                [(table, key, due, in_flight) for table, key, due in marks.items],
            )
            if marks.rescan:
                # Asked before the write too: a front killed before it lands leaves the ask.
                db.execute("UPDATE watched_tables SET scans_wanted = scans_wanted + 1")

    def _land(self, marks: Marks) -> None:
        with self._transaction() as db:
            db.executemany(
                "UPDATE expiring_items SET in_flight = max(in_flight - 1, 0), writes = writes + 1"
                " WHERE table_name = ? AND item_key = ?",
                [(table, key) for table, key, _ in marks.items],
            )
            if marks.rescan:
                # And after: a scan that had passed the written items starts again.
                db.execute("UPDATE watched_tables SET scans_wanted = scans_wanted + 1")

    # ---------------------------------------------------------------- the sweep's side

    def record(self, table: str, items: list[tuple[str, int]]) -> None:
        """Adds what a scan found (item key, due at); a row only ever moves earlier."""
        self._mark(Marks([(table, key, due) for key, due in items]), in_flight=0)

    def scans_wanted(self) -> list[tuple[str, Watched, int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT table_name, attribute, key_names, scans_wanted FROM watched_tables"
                " WHERE scans_wanted > scans_done ORDER BY table_name"
            ).fetchall()
        return [(name, Watched(a, tuple(json.loads(k))), wanted) for name, a, k, wanted in rows]

    def scanned(self, table: str, wanted: int) -> None:
        """Records a scan that started when ``wanted`` scans of ``table`` were asked for."""
        with self._transaction() as db:
            db.execute(
                "UPDATE watched_tables SET scans_done = max(scans_done, ?) WHERE table_name = ?",
                (wanted, table),
            )

    def due(self, now: int, limit: int) -> list[DueItem]:
        """Rows whose time has passed (``check_at < now``, as TTL compares) and no write holds."""
        with self._lock:
            rows = self._db.execute(
                "SELECT table_name, item_key, check_at, writes FROM expiring_items"
                " WHERE check_at < ? AND in_flight = 0 ORDER BY check_at LIMIT ?",
                (now, limit),
            ).fetchall()
        return [DueItem(*row) for row in rows]

    def settle(self, item: DueItem, check_at: int | None) -> None:
        """Moves a looked-at row to ``check_at``, or ends it (None), unless a write marked it
        since it was read: then it stays due, to be looked at again."""
        where = (item.table, item.item_key, item.writes)
        with self._transaction() as db:
            if check_at is None:
                db.execute(
                    "DELETE FROM expiring_items WHERE table_name = ? AND item_key = ?"
                    " AND writes = ? AND in_flight = 0",
                    where,
                )
            else:
                db.execute(
                    "UPDATE expiring_items SET check_at = ? WHERE table_name = ? AND item_key = ?"
                    " AND writes = ? AND in_flight = 0",
                    (check_at, *where),
                )
