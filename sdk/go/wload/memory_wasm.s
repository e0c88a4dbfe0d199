// The size of linear memory and memory.grow, for the spill area
// (spill.go). Go's own runtime has both but does not export them.

//go:build !tinygo

#include "textflag.h"

// func memoryPages() uint32
TEXT ·memoryPages(SB), NOSPLIT, $0
	Get SP
	CurrentMemory
	I32Store ret+0(FP)
	RET

// func growMemory(pages uint32) int32
TEXT ·growMemory(SB), NOSPLIT, $0
	Get SP
	I32Load pages+0(FP)
	GrowMemory
	I32Store ret+8(FP)
	RET
