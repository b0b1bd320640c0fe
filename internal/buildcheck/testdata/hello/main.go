// Command hello is the smallest binary for the buildcheck tests.
package main

import "fmt"

func main() { fmt.Println("hello") }
