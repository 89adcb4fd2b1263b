"""CrewAI Flows on wayline: flow state on wayline's store through CrewAI's
``FlowPersistence`` seam (``WaylineFlowPersistence``), a resume that does not re-run
completed methods (``kickoff_on_wayline``), workers that claim queued flow runs
(``CrewAIWorker``, ``enqueue_flow``), ``@human_feedback`` pauses decided like any
approval (``AwaitDecision``), and tools whose calls go through the effect
ledger (``ledgered``). The only package importing ``crewai`` (the ``wayline[crewai]``
extra)."""

from wayline.crewai.feedback import AwaitDecision
from wayline.crewai.persistence import WaylineFlowPersistence, kickoff_on_wayline
from wayline.crewai.tools import LedgeredTool, ledgered
from wayline.crewai.worker import CrewAIWorker, FlowOutcome, enqueue_flow

__all__ = [
    "AwaitDecision",
    "CrewAIWorker",
    "FlowOutcome",
    "LedgeredTool",
    "WaylineFlowPersistence",
    "enqueue_flow",
    "kickoff_on_wayline",
    "ledgered",
]
