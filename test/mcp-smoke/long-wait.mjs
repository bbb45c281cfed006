// A 70-second execution through the official MCP TypeScript SDK client
// with its default request timeout (60 s) and resetTimeoutOnProgress: the
// server's progress notifications must keep the client waiting.
// Usage: node long-wait.mjs <seconds> <kubecode binary> [args...]
// Prints one JSON line with what it saw; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [seconds, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "kubecode-long-wait", version: "1.0.0" });
await client.connect(transport);
const values = [];
const started = Date.now();
try {
  const res = await client.callTool(
    { name: "execute_code", arguments: { code: `await sleep(${Number(seconds) * 1000})\nreturn 'slept'`, timeout: Number(seconds) + 60 } },
    CallToolResultSchema,
    { resetTimeoutOnProgress: true, onprogress: (p) => values.push(p.progress) },
  );
  let gaps = 0;
  for (let i = 1; i < values.length; i++) if (values[i] <= values[i - 1]) gaps++;
  console.log(JSON.stringify({
    text: res.content[0].text,
    isError: res.isError ?? false,
    seconds: Math.round((Date.now() - started) / 1000),
    notifications: values.length,
    notIncreasing: gaps,
  }));
} finally {
  await client.close();
}
