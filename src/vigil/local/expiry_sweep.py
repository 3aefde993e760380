"""The sweep that plays DynamoDB's TTL locally, from the expiry index (``vigil.local.expiry``).

Each pass (on the event pump's thread and clock) takes the index's due rows, a batch at a time,
and deletes each item on the condition that its TTL has passed, as DynamoDB does: a write that
gave the item a later TTL since wins, and the failed condition returns the item as it now is,
whose TTL becomes the row's new time. A table the index asks to have scanned (watched for the
first time, or after a PartiQL write) is scanned into it a page a pass, a page a second at most.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vigil.kit.aws import THROTTLING, error_code
from vigil.local.expiry import DueItem, ExpiryIndex, Watched, due_at, item_key
from vigil.observability import get_logger, log_event

log = get_logger("vigil.local.expiry")

SCAN_PAGE_ITEMS = 1000
SCAN_PAGE_SECONDS = 1.0
# Deletions a pass makes at most: a backlog (the clock moved by a day) must not hold the
# pump's thread, which fires the schedules too, for long.
DELETIONS_PER_PASS = 100


@dataclass
class _Scan:
    table: str
    watched: Watched
    wanted: int
    start_key: dict[str, Any] | None = None


class ExpirySweeper:
    """Deletes the items whose TTL has passed, from the index, on the caller's clock."""

    def __init__(
        self,
        dynamodb: Any,
        index: ExpiryIndex,
        scan_page_items: int = SCAN_PAGE_ITEMS,
        scan_page_seconds: float = SCAN_PAGE_SECONDS,
    ) -> None:
        self.dynamodb = dynamodb
        self.index = index
        self.scan_page_items = scan_page_items
        self.scan_page_seconds = scan_page_seconds
        self._scan: _Scan | None = None
        self._next_page_at = 0.0

    def watch(self, attributes: Mapping[str, str]) -> None:
        """Plays TTL on exactly these tables (table name: its TTL attribute)."""
        tables = {}
        for name, attribute in attributes.items():
            schema = self.dynamodb.describe_table(TableName=name)["Table"]["KeySchema"]
            tables[name] = Watched(attribute, tuple(e["AttributeName"] for e in schema))
        self.index.watch(tables)

    def sweep(self, now: datetime) -> None:
        """One pass: a page of a scan the index asked for, if one is due, then the due items."""
        moment = now.timestamp()
        if moment >= self._next_page_at and self._scan_a_page():
            self._next_page_at = moment + self.scan_page_seconds
        epoch = int(moment)
        deleted = 0
        for item in self.index.due(epoch, DELETIONS_PER_PASS):
            config = self.index.watched(item.table)
            gone, check_at = (True, None) if config is None else self._expire(item, config, epoch)
            deleted += gone
            self.index.settle(item, check_at)
        if deleted:
            log_event(log, "expired items deleted", count=deleted)

    def _scan_a_page(self) -> bool:
        if self._scan is None:
            wanted = self.index.scans_wanted()
            if not wanted:
                return False
            self._scan = _Scan(*wanted[0])
        scan, config = self._scan, self._scan.watched
        names = {f"#k{i}": name for i, name in enumerate(config.key_names)}
        request: dict[str, Any] = {
            "TableName": scan.table,
            "Limit": self.scan_page_items,
            "ConsistentRead": True,
            "FilterExpression": "attribute_type(#ttl, :number)",
            "ProjectionExpression": ", ".join([*names, "#ttl"]),
            "ExpressionAttributeNames": {**names, "#ttl": config.attribute},
            "ExpressionAttributeValues": {":number": {"S": "N"}},
        }
        if scan.start_key is not None:
            request["ExclusiveStartKey"] = scan.start_key
        page = self.dynamodb.scan(**request)
        found = []
        for item in page.get("Items", []):
            key, due = item_key(item, config.key_names), due_at(item.get(config.attribute))
            if key is not None and due is not None:
                found.append((key, due))
        self.index.record(scan.table, found)
        scan.start_key = page.get("LastEvaluatedKey")
        if scan.start_key is None:
            self.index.scanned(scan.table, scan.wanted)
            self._scan = None
        return True

    def _expire(self, item: DueItem, config: Watched, now: int) -> tuple[bool, int | None]:
        """Deletes the item if its TTL has passed: whether it did, and when to look at the
        item again (None: never)."""
        try:
            self.dynamodb.delete_item(
                TableName=item.table,
                Key=item.key,
                ConditionExpression="#ttl < :now",
                ExpressionAttributeNames={"#ttl": config.attribute},
                ExpressionAttributeValues={":now": {"N": str(now)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as error:
            code = error_code(error)
            if code == "ResourceNotFoundException":
                return False, None
            if code in THROTTLING:
                # Busy (vigil local --contention): DynamoDB's own TTL deletes never are, so
                # this one waits for a later pass instead of failing the sweep.
                return False, now + 1
            if code != "ConditionalCheckFailedException":
                raise
            current = getattr(error, "response", {}).get("Item")
            return False, None if current is None else due_at(current.get(config.attribute))
        return True, None
