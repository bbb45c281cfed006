// Command kubecode is the kubecode MCP server and its command line.
//
//	kubecode serve                      # MCP over stdio
//	kubecode serve --http 127.0.0.1:8080 # MCP over streamable HTTP at /mcp
//	kubecode demo                       # a local API server with seeded workloads, and the broker on it
//	kubecode search "pods restarting"   # what search_tools answers
//	kubecode exec script.ts             # what execute_code answers
package main
