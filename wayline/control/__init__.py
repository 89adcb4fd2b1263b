"""The control plane: who may decide, which code version a run continues on, what is kept."""

from wayline.control.approvals import Actor, ApprovalPolicy, ApprovalRequest, decide, role_policy

__all__ = ["Actor", "ApprovalPolicy", "ApprovalRequest", "decide", "role_policy"]
