"""CrewAI Flows on wayline: flow state on wayline's store through CrewAI's
``FlowPersistence`` seam (``WaylineFlowPersistence``), a resume that does not re-run
completed methods (``kickoff_on_wayline``), and tools whose calls go through the effect
ledger (``ledgered``). The only package importing ``crewai`` (the ``wayline[crewai]``
extra)."""

from wayline.crewai.persistence import WaylineFlowPersistence, kickoff_on_wayline
from wayline.crewai.tools import LedgeredTool, ledgered

__all__ = ["LedgeredTool", "WaylineFlowPersistence", "kickoff_on_wayline", "ledgered"]
