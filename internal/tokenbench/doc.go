// Package tokenbench measures what an agent pays, in o200k_base tokens, to
// answer the same questions about the same cluster through different MCP
// servers: kubecode in code mode, kubecode in direct mode, and a real peer
// (containers/kubernetes-mcp-server, run over stdio). Each side answers
// each scenario with a fixed sequence of tool calls, the way a capable
// agent would; the answer is computed from what the tools returned and
// checked against the scenario's truth, so a side that cannot answer
// fails rather than looks cheap.
//
// What is counted is what the model reads or writes: the tool definitions,
// the question, every call's arguments and result, and the answer. The
// cumulative input adds up the context each turn of the agent loop sends
// again (definitions, question and every earlier call and result): what
// the first question of a conversation costs. Clients cache the tool
// definitions, so a later question costs its calls and results
// (Run.CallTokens); Sessions adds questions up into one conversation.
//
//	side, err := tokenbench.Connect(ctx, "code", transport)
//	run, err := scenario.Run(ctx, side, tokenbench.KindCode)
//	fmt.Println(run.CumulativeInput(), run.CallTokens())
package tokenbench
