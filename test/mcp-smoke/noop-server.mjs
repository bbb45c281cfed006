// A no-op MCP server over stdio with the official MCP TypeScript SDK: one
// tool, "noop", that answers "2". The yardstick of BenchmarkExecuteTrivialVsNoop.
// Usage: node noop-server.mjs
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "noop", version: "1.0.0" });
server.registerTool("noop", { description: "answers 2" }, async () => ({ content: [{ type: "text", text: "2" }] }));
await server.connect(new StdioServerTransport());
