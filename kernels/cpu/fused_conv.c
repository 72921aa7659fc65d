/* FusedConvAct: y = act(conv(X, W) + B + Z). Each image goes through the shared im2col + cblas
 * path of Conv (bias included), then one pass adds the residual and applies the activation while
 * that image's output is still warm in cache. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

bool kn_cpu_FusedConvAct(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w = &call->inputs[1];
    const kn_tensor *b = call->ninputs > 2 ? &call->inputs[2] : NULL;
    const kn_tensor *z = call->ninputs > 3 ? &call->inputs[3] : NULL;
    kn_tensor *y = &call->outputs[0];
    fused_act act;
    kn_conv_geom geom;
    if (!fused_act_read(call, &act) || !kn_conv_geom_init(call, x, w, y, &geom))
        return false;
    const float *res = z && z->data ? z->data : NULL;
    if (res && z->numel != y->numel)
        return kn_fail(call, "the residual has %lld elements, the output %lld",
                       (long long)z->numel, (long long)y->numel);
    const float *bias = b && b->data ? b->data : NULL;

    int64_t batch = geom.batch;
    int64_t x_image = batch ? x->numel / batch : 0, y_image = batch ? y->numel / batch : 0;
    kn_conv_geom one = geom;
    one.batch = 1;
    for (int64_t n = 0; n < batch; n++) {
        const float *xn = (const float *)x->data + n * x_image;
        float *yn = (float *)y->data + n * y_image;
        if (!kn_conv_f32(call, &one, xn, w->data, bias, yn))
            return false;
        if (res) {
            const float *zn = res + n * y_image;
            for (int64_t i = 0; i < y_image; i++)
                yn[i] += zn[i];
        }
        fused_act_apply(&act, yn, y_image);
    }
    return true;
}
