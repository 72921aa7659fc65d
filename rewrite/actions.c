/* The actions a replacement may name in `[...]`, by enum: one implementation per action of
 * DSL_ACTIONS (dsl/dsl.h), rw_action_<name> in action_<name>.c. The table is generated from that
 * list, so an action declared without its implementation fails to link, and the assert below
 * fails to compile if the table and the enum disagree in length. */
#include "rewrite/internal.h"

#include "base/check.h"

static rw_action_fn *const actions[] = {
#define RW_ACTION_ROW(id, name) [DSL_ACTION_##id] = rw_action_##name,
    DSL_ACTIONS(RW_ACTION_ROW)
#undef RW_ACTION_ROW
};

_Static_assert(FR_COUNT_OF(actions) == DSL_ACTION_COUNT, "one implementation per action");

rw_action_fn *rw_action_get(dsl_action a)
{
    FR_CHECK((unsigned)a < DSL_ACTION_COUNT);
    return actions[a];
}
