package runtime

import goruntime "runtime"

// AfterEachGC calls f on the runtime's cleanup goroutine after each
// garbage collection from now on, until f returns false. It costs nothing
// between collections: a process that allocates nothing is never woken
// for it. The worker watches a script's memory with it; the server tunes
// its collector with it.
func AfterEachGC(f func() bool) {
	var arm func()
	arm = func() {
		// An object with a pointer: the tiny allocator, whose objects'
		// cleanups may never run, takes none.
		sentinel := &struct{ _ *byte }{}
		goruntime.AddCleanup(sentinel, func(struct{}) {
			if f() {
				arm()
			}
		}, struct{}{})
	}
	arm()
}
