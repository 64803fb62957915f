"""Integrations with agent frameworks: an MCP server (`mcp_server`), a LangGraph store
(`langgraph`) and the import of an existing mem0 store (`mem0_import`). Each imports its framework
lazily, so `import memstore` never needs `mcp` or `langgraph`."""
