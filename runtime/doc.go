// Package runtime runs an agent's TypeScript in a fresh, bounded JavaScript
// sandbox.
//
// The script is transpiled with esbuild and executed by goja. Host operations
// (plain JSON in, plain JSON out) appear to the script as async functions on
// the global tools object; the runtime knows nothing of what they do. Each
// execution names its own host function, the only way out of the sandbox:
//
//	r, err := runtime.New([]runtime.Operation{{Name: "shop.orders.list"}}, nil)
//	res := r.Execute(ctx, "return (await tools.shop.orders.list({})).length",
//		&runtime.ExecOptions{Host: func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
//			return json.RawMessage(`[1, 2, 3]`), nil
//		}})
//	fmt.Println(string(res.Value)) // 3
package runtime
