// Smoke test for kubecode over stdio with the official MCP TypeScript SDK.
// Usage: node smoke.mjs <kubecode binary> [args...]
// Prints one JSON line with what it saw; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node smoke.mjs <kubecode binary> [args...]");
  process.exit(2);
}
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "kubecode-smoke", version: "1.0.0" });
await client.connect(transport);
try {
  const { tools } = await client.listTools();
  const search = await client.callTool({ name: "search_tools", arguments: { query: "list pods" } });
  const exec = await client.callTool({
    name: "execute_code",
    arguments: { code: "const ns = await tools.kubernetes.namespaces.list()\nreturn ns.map((n: any) => n.metadata.name).includes('default')" },
  });
  const bad = await client.callTool({ name: "execute_code", arguments: { code: "const x: any = null\nx.y" } });
  console.log(JSON.stringify({
    tools: tools.map((t) => t.name).sort(),
    searchFoundPodsList: search.content[0].text.includes("list(input?: {") && search.content[0].text.includes("Promise<Pod[]>"),
    execText: exec.content[0].text,
    execIsError: exec.isError ?? false,
    badIsError: bad.isError ?? false,
    badText: bad.content[0].text.split("\n")[0],
  }));
} finally {
  await client.close();
}
