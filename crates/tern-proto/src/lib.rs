//! Sans-IO MCP rules.
