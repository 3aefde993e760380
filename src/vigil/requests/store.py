"""Where requests, their listing, the namespace's blocking edges and execution intents are
kept; and what the requests' use cases reach."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Protocol

from vigil.conversations.store import ConversationPorts
from vigil.kit.uow import Write
from vigil.quotas.store import QuotaStore
from vigil.requests.records import Execution, Request, SharedAnswer
from vigil.requests.routing import Assignment, Routing
from vigil.requests.standing import StandingApproval
from vigil.requests.waits import WaitGraph

# The listing of every request of a namespace, which its overseers read: kept as the listing
# of an id no principal has.
EVERYONE = "*"


def listing_places(request: Request) -> list[str]:
    """Whose listings a request has a place in: its requester's, its audience's, and the
    namespace's own (EVERYONE)."""
    return [request.requester, *request.audience, EVERYONE]


def listing_position(request: Request) -> str:
    """Where a request sits in its principals' listings: oldest first, by the moment it was
    asked, then its id."""
    return f"{int(request.asked_at.timestamp() * 1000):015d}#{request.id}"


class RequestStore(ABC):
    @abstractmethod
    def get_request(self, namespace: str, request_id: str) -> Request | None: ...

    @abstractmethod
    def get_requests(self, namespace: str, request_ids: list[str]) -> list[Request]:
        """The requests that exist among ``request_ids``, read consistently, in no order."""

    @abstractmethod
    def add_request(self, request: Request) -> Write:
        """Creates ``request`` and its place in each listing of ``listing_places``; the
        commit fails if it exists. The places may be written
        ahead of the rest when the whole does not fit one transaction: a place whose request
        was never stored is skipped by the listing."""

    @abstractmethod
    def save_request(self, request: Request) -> Write:
        """Replaces the request if it is stored at version ``request.version - 1``."""

    @abstractmethod
    def list_requests(
        self, namespace: str, principal_id: str, after: str | None, limit: int
    ) -> list[str]:
        """Up to ``limit`` positions (``listing_position``) in ``principal_id``'s listing
        (EVERYONE: the namespace's), oldest first, after ``after`` (a position) if given."""

    @abstractmethod
    def get_wait_graph(self, namespace: str) -> WaitGraph:
        """The namespace's blocking edges; an empty graph at version 0 if none was stored."""

    @abstractmethod
    def save_wait_graph(self, graph: WaitGraph) -> Write:
        """Replaces the graph if it is stored at version ``graph.version - 1`` (0: absent)."""

    @abstractmethod
    def get_execution(self, namespace: str, request_id: str) -> Execution | None: ...

    @abstractmethod
    def add_execution(self, execution: Execution) -> Write:
        """Creates the request's one execution intent; the commit fails if it has one."""

    @abstractmethod
    def save_execution(self, execution: Execution) -> Write:
        """Replaces the execution if it is stored at version ``execution.version - 1``."""

    @abstractmethod
    def get_shared_answer(self, namespace: str, key: str) -> SharedAnswer | None:
        """The answer kept under the digest ``key`` of a shared_key, if any."""

    @abstractmethod
    def keep_shared_answer(self, answer: SharedAnswer) -> Write:
        """Keeps ``answer`` under its key, replacing any answer kept before."""

    @abstractmethod
    def get_standing(self, namespace: str, standing_id: str) -> StandingApproval | None: ...

    @abstractmethod
    def standing_for(self, namespace: str, asker: str, now: datetime) -> list[StandingApproval]:
        """The active standing approvals not expired at ``now`` that answer ``asker``: its
        own and those for any agent, read consistently, soonest to expire first."""

    @abstractmethod
    def list_standing(
        self, namespace: str, after: str | None, limit: int
    ) -> list[tuple[str, StandingApproval]]:
        """Up to ``limit`` of the namespace's active standing approvals, each with its position,
        after ``after`` (a position) if given."""

    @abstractmethod
    def add_standing(self, standing: StandingApproval) -> Write:
        """Creates ``standing``; the commit fails if it exists."""

    @abstractmethod
    def save_standing(self, standing: StandingApproval) -> Write:
        """Replaces it if stored at version ``standing.version - 1``."""

    @abstractmethod
    def get_routing(self, namespace: str) -> Routing:
        """The namespace's routing rules; none, at version 0, if never set."""

    @abstractmethod
    def save_routing(self, routing: Routing) -> Write:
        """Replaces the rules if stored at version ``routing.version - 1`` (0: absent)."""

    @abstractmethod
    def get_assignments(self, namespace: str, people: list[str]) -> list[Assignment]:
        """The last assignments of those of ``people`` ever assigned, read consistently."""

    @abstractmethod
    def save_assignment(self, assignment: Assignment) -> Write:
        """Replaces it if stored at version ``assignment.version - 1`` (0: absent)."""


class EscalationChannels(Protocol):
    """Where a request may escalate: the channels of its namespace, which the notifications
    keep (a read across, declared here and given by the call context)."""

    def get_channel(self, namespace: str, channel_id: str) -> object | None: ...


class RequestPorts(ConversationPorts, QuotaStore, RequestStore, ABC):
    """What the requests' use cases read and write: the requests, the open-requests quota,
    and the conversations they are asked in (with the mailboxes their responses go to)."""
