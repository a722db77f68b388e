/* Input of weft-pmix's bindgen run (build.rs): the OpenPMIx client API. */
#include <pmix.h>
