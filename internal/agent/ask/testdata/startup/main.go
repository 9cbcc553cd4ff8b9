// Command startup does nothing: what it costs to run is what any Go
// program's start costs on the machine, the baseline of TestHookCPU_NoQuestion.
package main

func main() {}
