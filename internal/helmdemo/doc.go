// Package helmdemo seeds the Helm part of the demo: a release of the
// examples' web-app chart, edited by hand since it was installed, so that
// a drift audit has something to find. It is apart from package scenario,
// which the Kubernetes adapter's tests use, because it installs through
// the Helm adapter, which builds on the Kubernetes one.
package helmdemo
