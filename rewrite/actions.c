/* The actions a replacement may name in `[...]`, by the rules language's names. Each lives in its
 * own file (action_<name>.c). */
#include "rewrite/internal.h"

#include "base/check.h"

#include <string.h>

static const rw_action_impl actions[] = {
    {"fold_bn", rw_action_fold_bn},
    {"concat_weights", rw_action_concat_weights},
    {"fold_scale", rw_action_fold_scale},
    {"fold_transpose", rw_action_fold_transpose},
    {"fold_attention", rw_action_fold_attention},
    {"fold_pad", rw_action_fold_pad},
    {"separable", rw_action_separable},
    {"match_dtype", rw_action_match_dtype},
};

const rw_action_impl *rw_action_find(const char *name)
{
    for (size_t i = 0; i < FR_COUNT_OF(actions); i++)
        if (strcmp(actions[i].name, name) == 0)
            return &actions[i];
    return NULL;
}

bool rw_action_known(const char *name)
{
    return rw_action_find(name) != NULL;
}
