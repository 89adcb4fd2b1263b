"""Checkpointers at LangGraph's paths (``langgraph.checkpoint.memory``): in wayline a
checkpointer is a store (``wayline.connect(url)``); these names build one."""
