"""The research workflow: state, nodes, graph assembly and the run lifecycle."""
