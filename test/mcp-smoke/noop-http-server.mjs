// A no-op MCP server over streamable HTTP with the official MCP TypeScript
// SDK: one tool, "noop", that answers "2", one session per client. The
// yardstick of BenchmarkExecuteTrivialHTTPVsNoop. It listens on a free
// loopback port and prints its URL as its first line.
// Usage: node noop-http-server.mjs
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  let transport = sessions.get(req.headers["mcp-session-id"]);
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    const server = new McpServer({ name: "noop", version: "1.0.0" });
    server.registerTool("noop", { description: "answers 2" }, async () => ({ content: [{ type: "text", text: "2" }] }));
    await server.connect(transport);
  }
  await transport.handleRequest(req, res);
});
httpServer.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${httpServer.address().port}/mcp`);
});
