"""The functional API: @entrypoint with a checkpointer, @task futures, interrupt inside,
previous and entrypoint.final, and a failure between tasks: the task that finished before
the failure does not run again when the entrypoint is invoked again."""

from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt


def main(checkpointer):
    calls = []
    broken = {"on": True}

    @task
    def slugify(title: str) -> str:
        calls.append(f"slugify:{title}")
        return title.lower().replace(" ", "-")

    @task
    def publish(slug: str) -> str:
        calls.append(f"publish:{slug}")
        if broken["on"]:
            raise ConnectionError("cms down")
        return f"https://blog/{slug}"

    @entrypoint(checkpointer=checkpointer)
    def workflow(titles: list, *, previous=None):
        slugs = [f.result() for f in [slugify(t) for t in titles]]
        ok = interrupt({"publish": slugs})
        if not ok:
            return entrypoint.final(value={"published": []}, save=previous)
        urls = [publish(s).result() for s in slugs]
        count = (previous or 0) + len(urls)
        return entrypoint.final(value={"published": urls, "before": previous}, save=count)

    seen = []
    config = {"configurable": {"thread_id": "f1"}}
    seen.append(workflow.invoke(["Hello World", "Second Post"], config))
    try:
        workflow.invoke(Command(resume=True), config)
    except ConnectionError as exc:
        seen.append(f"failed: {exc}")
    broken["on"] = False
    seen.append(workflow.invoke(None, config))
    seen.append(workflow.get_state(config).values)
    seen.append(sorted(calls))
    calls.clear()
    for chunk in workflow.stream(["Third"], config):
        seen.append(chunk)
    seen.append(sorted(calls))
    for chunk in workflow.stream(Command(resume=True), config):
        seen.append(chunk)
    seen.append(workflow.invoke(["Fourth"], config))
    seen.append(workflow.invoke(Command(resume=False), config))
    return seen
