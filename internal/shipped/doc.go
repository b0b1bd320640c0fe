// Package shipped tests the Lambda bootstraps as they are shipped (build
// tag integration): it builds each function with the Makefile's
// build-<LogicalId> recipe, the one sam build runs, and runs the local
// stack with every function served by its linux/arm64 bootstrap as a
// process behind a Lambda Runtime API (package lambdaproc), under
// qemu-aarch64 on a host that is not arm64. Real traffic through the
// local API then exercises each function at least once: a completed
// transfer, one whose credit is refused and refunded, and one whose
// execution is aborted and settled by the reaper.
package shipped
