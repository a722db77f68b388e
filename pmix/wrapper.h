/* Input of weft-pmix's bindgen run (build.rs): the OpenPMIx client and server APIs. */
#include <pmix.h>
#include <pmix_server.h>
