package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubecode/kubecode/runtime"
)

func Example() {
	ops := []runtime.Operation{{
		Name: "kubernetes.pods.list",
		Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`[{"name":"web-1","restarts":4},{"name":"web-2","restarts":0}]`), nil
		},
	}}
	r, err := runtime.New(ops, nil)
	if err != nil {
		panic(err)
	}
	res := r.Execute(context.Background(), `
const pods = await tools.kubernetes.pods.list({ namespace: "shop" })
pods.filter(p => p.restarts > 0).map(p => p.name)`, nil)
	fmt.Println(string(res.Value), res.Error)

	res = r.Execute(context.Background(), "const x: any = null\nx.spec", nil)
	fmt.Println(res.Error)
	// Output:
	// ["web-1"] <nil>
	// user.ts:2:3: runtime error: TypeError: Cannot read property 'spec' of undefined
}
