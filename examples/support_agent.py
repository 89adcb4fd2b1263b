"""Run the demo's support agent against a SQLite file and print its final state.

python examples/support_agent.py runs.db
"""

import sys

import wayline
from wayline.demo.support_agent import build_graph, demo_input

if __name__ == "__main__":
    store = wayline.connect(f"sqlite:///{sys.argv[1] if len(sys.argv) > 1 else 'support.db'}")
    app = build_graph(store)
    final = app.invoke(demo_input(), {"configurable": {"thread_id": "ticket-1042"}})
    print(f"resolved={final['resolved']} messages={len(final['messages'])}")
