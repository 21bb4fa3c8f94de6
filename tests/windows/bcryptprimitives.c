/*
 * bcryptprimitives.dll for Wine 8.0, which lacks it: Rust's standard library (1.78 and later)
 * imports ProcessPrng from it for HashMap keys and other random bytes, so without this DLL
 * beside it every Rust .exe fails to load under Wine (status c0000135, exit code 53).
 * Windows 10 and later have the real one; this file is only for running tests under Wine
 * and is never shipped.
 *
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's SystemFunction036), which Wine
 * implements. RtlGenRandom takes a ULONG length, so a larger request goes in pieces.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG piece = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        if (!RtlGenRandom(data, piece)) {
            return FALSE;
        }
        data += piece;
        len -= piece;
    }
    return TRUE;
}
