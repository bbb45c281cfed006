package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// hostFailure remembers which error objects came from failed host calls, so
// an uncaught one is reported as a tool error with its operation and code.
type hostFailure struct {
	tool string
	code json.RawMessage
}

// hostCall returns the JavaScript function for op: it serializes the
// argument to JSON on the loop, runs op on another goroutine (bounded by
// Concurrency) and settles the returned promise back on the loop.
func (e *execution) hostCall(op *Operation) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		args := json.RawMessage("{}")
		if a := call.Argument(0); !goja.IsUndefined(a) && !goja.IsNull(a) {
			s, err := e.stringify(goja.Undefined(), a)
			if err != nil {
				panic(err)
			}
			if !goja.IsUndefined(s) {
				args = json.RawMessage(s.String())
			}
		}
		e.calls++
		if e.calls > e.r.opts.MaxHostCalls {
			e.setFatal(&Error{Kind: KindLimit, Tool: op.Name,
				Message: fmt.Sprintf("more than %d tool calls in one execution", e.r.opts.MaxHostCalls),
				Hint:    "use list operations with selectors instead of one call per object"}, errLimit)
			return goja.Undefined()
		}
		site := e.vm.CaptureCallStack(6, nil)
		promise, resolve, reject := e.vm.NewPromise()
		e.pending++
		ctx := e.ctx
		go func() {
			var out json.RawMessage
			var err error
			select {
			case e.sem <- struct{}{}:
				out, err = safeCall(e.host, op, ctx, args)
				<-e.sem
			case <-ctx.Done():
				err = ctx.Err()
			}
			e.enqueue(func() {
				e.pending--
				if err != nil {
					e.call(reject, e.toolError(op.Name, err, site))
					return
				}
				v, perr := answerValue(e.vm, out)
				if perr != nil {
					e.call(reject, e.toolError(op.Name, fmt.Errorf("operation returned invalid JSON: %v", perr), site))
					return
				}
				e.call(resolve, v)
			})
		}()
		return e.vm.ToValue(promise)
	}
}

// safeCall runs a host function, turning a panic into a tool error.
func safeCall(host HostFunc, op *Operation, ctx context.Context, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &CallError{Name: "ToolError", Message: fmt.Sprintf("operation %s failed internally: %v", op.Name, p), Code: json.RawMessage(`"panic"`)}
		}
	}()
	return host(ctx, op.Name, args)
}

// noHost is the host of an execution given none.
func noHost(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, &CallError{Name: "ToolError", Message: "no operations are available to this execution"}
}

// toolError builds the JavaScript Error a failed host call rejects with: it
// carries name, message, tool and code, and a stack pointing at the call
// site in the agent's code.
func (e *execution) toolError(tool string, err error, site []goja.StackFrame) goja.Value {
	ce := &CallError{}
	if !errors.As(err, &ce) {
		ce = &CallError{Message: err.Error()}
		if errors.Is(err, errDeadline) || e.ctx.Err() != nil {
			ce.Message = "the execution deadline passed before the call finished"
		}
	}
	name := ce.Name
	if name == "" {
		name = "ToolError"
	}
	obj, nerr := e.vm.New(e.errorCtor, e.vm.ToValue(ce.Message))
	if nerr != nil {
		panic(nerr)
	}
	_ = obj.Set("name", name)
	_ = obj.Set("message", ce.Message)
	_ = obj.Set("tool", tool)
	var code goja.Value = goja.Null()
	if len(ce.Code) > 0 {
		if v, perr := jsonToValue(e.vm, ce.Code); perr == nil {
			code = v
		}
	}
	_ = obj.Set("code", code)
	if ce.Reason != "" {
		_ = obj.Set("reason", ce.Reason)
	}
	stack := name + ": " + ce.Message
	for _, f := range site {
		p := f.Position()
		if p.Line == 0 {
			continue
		}
		stack += "\n\tat " + f.FuncName() + " (" + jsName + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column) + ")"
	}
	_ = obj.Set("stack", stack)
	e.failures[obj] = &hostFailure{tool: tool, code: ce.Code}
	return obj
}
