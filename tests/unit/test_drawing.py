"""``get_graph()`` drawn as LangGraph draws it: ``xray`` replaces a subgraph node by the
subgraph's nodes (``node:inner``, in a Mermaid ``subgraph`` block), node ids are made safe
for Mermaid, a subgraph node is a ``CompiledStateGraph`` in ``to_json``, and a loop with no
way out gets LangGraph's conditional edge to END."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from wayline.graph import END, START, StateGraph


class S(TypedDict):
    x: str


def nested() -> Any:
    inner = StateGraph(S)
    inner.add_node("up", lambda s: {"x": "up"})
    inner.add_edge(START, "up")
    inner.add_edge("up", END)
    outer = StateGraph(S)
    outer.add_node("inner", inner.compile())
    outer.add_node("side step", lambda s: {"x": "side"})
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "side step")
    return outer.compile()


def test_xray_draws_the_subgraph_in_place_of_its_node() -> None:
    drawn = nested().get_graph(xray=True).draw_mermaid()
    body = drawn.split("graph TD;\n")[1].split("\tclassDef")[0]
    assert body == (
        "\t__start__([<p>__start__</p>]):::first\n"
        "\tside\\20step(side step)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> inner\\3aup;\n"
        "\tinner\\3aup --> side\\20step;\n"
        "\tside\\20step --> __end__;\n"
        "\tsubgraph inner\n"
        "\tinner\\3aup(up)\n"
        "\tend\n"
    )


def test_without_xray_a_subgraph_is_one_node_of_langgraphs_class() -> None:
    graph = nested().get_graph()
    assert graph.draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> inner;\n\tinner --> side\\20step;\n"
        "\tside\\20step --> __end__;\n"
    )
    kinds = {n["id"]: n.get("data", {}).get("id") for n in graph.to_json()["nodes"]}
    assert kinds["inner"] == ["langgraph", "graph", "state", "CompiledStateGraph"]
    assert kinds["side step"] == ["langgraph", "_internal", "_runnable", "RunnableCallable"]


def test_a_loop_with_no_way_out_ends_where_langgraphs_walk_ends() -> None:
    g = StateGraph(S)
    g.add_node("human", lambda s: {"x": "h"})
    g.add_node("agent", lambda s: {"x": "a"})
    g.add_edge(START, "human")
    g.add_edge("human", "agent")
    g.add_edge("agent", "human")
    assert g.compile().get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> human;\n\tagent --> human;\n\thuman --> agent;\n"
        "\tagent -.-> __end__;\n"
    )


def test_edges_are_a_list_of_named_tuples_and_mapped_destinations_label_them() -> None:
    from wayline import Command

    def route(state: S) -> Command[Any]:
        return Command(goto="b")

    g = StateGraph(S)
    g.add_node("a", route, destinations={"b": "yes", "c": "no"})
    g.add_node("b", lambda s: {"x": "b"})
    g.add_node("c", lambda s: {"x": "c"})
    g.add_edge(START, "a")
    edges = g.compile().get_graph().edges
    assert edges == [  # as langchain-core's Edge (a named tuple) compares
        ("__start__", "a", None, False),
        ("a", "b", "yes", True),
        ("a", "c", "no", True),
        ("b", "__end__", None, False),
        ("c", "__end__", None, False),
    ]
