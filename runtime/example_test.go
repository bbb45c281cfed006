package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubecode/kubecode/runtime"
)

func Example() {
	r, err := runtime.New([]runtime.Operation{{Name: "kubernetes.pods.list"}}, nil)
	if err != nil {
		panic(err)
	}
	// Each execution names the host that carries out its calls.
	host := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`[{"name":"web-1","restarts":4},{"name":"web-2","restarts":0}]`), nil
	}
	res := r.Execute(context.Background(), `
const pods = await tools.kubernetes.pods.list({ namespace: "shop" })
pods.filter(p => p.restarts > 0).map(p => p.name)`, &runtime.ExecOptions{Host: host})
	fmt.Println(string(res.Value), res.Error)

	res = r.Execute(context.Background(), "const x: any = null\nx.spec", nil)
	fmt.Println(res.Error)
	// Output:
	// ["web-1"] <nil>
	// user.ts:2:3: runtime error: TypeError: Cannot read property 'spec' of undefined
}
