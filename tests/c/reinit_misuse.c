/* reinit_misuse.c: global restart used wrongly through the C ABI gives typed codes.
 * Modes (argv[1]): twice, after_init, main_error, null, init_inside. Prints
 * "reinit_misuse.c: MODE ok" when the code is the expected one. */
#include <stdio.h>
#include <string.h>

#include "weft.h"

static int main_ok(int argc, char **argv) {
    (void)argc, (void)argv;
    weft_comm w;
    int rc = weft_comm_world(&w);
    return rc != WEFT_SUCCESS ? rc : weft_barrier(w);
}

static int main_err(int argc, char **argv) {
    (void)argc, (void)argv;
    return 42;
}

static int main_init_inside(int argc, char **argv) {
    (void)argc, (void)argv;
    if (weft_reinit_state() != WEFT_REINIT_NEW || weft_reinit_epoch() != 0)
        return 1;
    if (weft_init() != WEFT_ERR_ALREADY_INITIALIZED)
        return 2;
    if (weft_finalize() != WEFT_ERR_REINIT_USAGE)
        return 3;
    /* The refused finalize left the instance in place. */
    weft_comm w;
    if (weft_comm_world(&w) != WEFT_SUCCESS || weft_barrier(w) != WEFT_SUCCESS)
        return 4;
    return 0;
}

static int check(const char *mode, int got, int want) {
    if (got != want) {
        printf("reinit_misuse.c: %s FAILED: got %d (%s), want %d\n", mode, got, weft_last_error(), want);
        return 1;
    }
    printf("reinit_misuse.c: %s ok: %s\n", mode, got ? weft_last_error() : "success");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "twice")) {
        if (check("first", weft_reinit(argc, argv, main_ok), WEFT_SUCCESS))
            return 1;
        return check(mode, weft_reinit(argc, argv, main_ok), WEFT_ERR_REINIT_USAGE);
    }
    if (!strcmp(mode, "after_init")) {
        if (weft_init() != WEFT_SUCCESS)
            return 1;
        int bad = check(mode, weft_reinit(argc, argv, main_ok), WEFT_ERR_REINIT_USAGE);
        weft_finalize();
        return bad;
    }
    if (!strcmp(mode, "main_error")) {
        int rc = weft_reinit(argc, argv, main_err);
        if (rc == WEFT_ERR_REINIT_MAIN && !strstr(weft_last_error(), "42"))
            rc = -1;
        return check(mode, rc, WEFT_ERR_REINIT_MAIN);
    }
    if (!strcmp(mode, "null"))
        return check(mode, weft_reinit(argc, argv, NULL), WEFT_ERR_ARG);
    if (!strcmp(mode, "init_inside")) {
        if (weft_reinit_state() != -1)
            return 1;
        return check(mode, weft_reinit(argc, argv, main_init_inside), WEFT_SUCCESS);
    }
    printf("reinit_misuse.c: unknown mode %s\n", mode);
    return 2;
}
