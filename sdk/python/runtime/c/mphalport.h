/* The HAL the core asks of a port: only the clock and stdout (print goes
 * to the engine's log, port.c). */
#include <stddef.h>
#include <stdint.h>
static inline void mp_hal_set_interrupt_char(char c) { (void)c; }
#define mp_hal_ticks_ms() 0
#define mp_hal_ticks_us() 0
#define mp_hal_ticks_cpu() 0
