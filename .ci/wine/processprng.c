/* bcryptprimitives.dll shim for running osgauge's Windows build under Wine 8 (CI only).
 * Rust's std imports ProcessPrng from bcryptprimitives.dll, which Wine 8 lacks. This DLL exports
 * it and forwards to RtlGenRandom (advapi32 SystemFunction036), which Wine has. It is built by
 * .ci/cross.sh with x86_64-w64-mingw32-gcc -shared and placed beside each test executable;
 * it is never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
