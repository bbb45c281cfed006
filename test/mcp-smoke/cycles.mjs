// Many MCP clients that come and go, as the official TypeScript SDK's
// users write them: connect → call → client.close(), which ends no
// session on the server (it sends no DELETE). Then one more client calls.
// Usage: node cycles.mjs <url> <cycles>
// Prints one JSON line with what it saw; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, cycles] = process.argv.slice(2);
const n = Number(cycles);

async function cycle(i) {
  const client = new Client({ name: `kubecode-cycle-${i}`, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const res = await client.callTool({ name: "execute_code", arguments: { code: `return ${i} + 1` } });
    return res.content[0].text;
  } finally {
    await client.close();
  }
}

const started = Date.now();
let wrong = 0;
let firstError = "";
for (let i = 0; i < n; i++) {
  try {
    if ((await cycle(i)) !== String(i + 1)) wrong++;
  } catch (e) {
    firstError = `cycle ${i}: ${e.message}`;
    break;
  }
}
let last = "", lastError = "";
try {
  last = await cycle(n);
} catch (e) {
  lastError = e.message;
}
// A client that ends its session (HTTP DELETE): the server forgets it.
let afterDelete = 0;
{
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: "kubecode-cycle-delete", version: "1.0.0" });
  await client.connect(transport);
  const id = transport.sessionId;
  await transport.terminateSession();
  await client.close();
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  afterDelete = res.status;
}
console.log(JSON.stringify({ cycles: n, wrong, firstError, last, lastError, afterDelete, seconds: Math.round((Date.now() - started) / 1000) }));
