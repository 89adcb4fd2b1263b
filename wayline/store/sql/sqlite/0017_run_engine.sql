-- 0017: the engine a run executes on: 'wayline' (wayline's loop) or 'langgraph' (LangGraph's
-- own engine on WaylineSaver, under a worker's lease: wayline.langgraph.engine). Runs and
-- LangGraph threads written before were all one or the other by graph name.
ALTER TABLE runs ADD COLUMN engine TEXT NOT NULL DEFAULT 'wayline';
UPDATE runs SET engine = 'langgraph' WHERE graph_name = 'langgraph';
