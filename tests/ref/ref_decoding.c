/* CPU references for the decoding family; see ref_decoding.h. */
#include "ref_decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t ref_order_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    if (v != v)
        u = 0x7fffffffu;
    else if (v == 0.0f)
        u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

float ref_order_value(uint32_t k)
{
    const uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float v;
    memcpy(&v, &u, 4);
    return v;
}

typedef struct cand {
    uint32_t key;
    int idx;
    float value;
} cand;

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = (const cand *)a, *y = (const cand *)b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

void ref_topk(const float *x, int n, float add, int index_base, int k, float *values, int *indices)
{
    cand *c = (cand *)malloc((size_t)n * sizeof(cand));
    for (int i = 0; i < n; i++) {
        const float v = x[i] + add;
        c[i].key = ref_order_key(v);
        c[i].idx = index_base + i;
        c[i].value = v;
    }
    qsort(c, (size_t)n, sizeof(cand), cand_cmp);
    for (int i = 0; i < k; i++) {
        values[i] = ref_order_value(c[i].key);
        indices[i] = c[i].idx;
    }
    free(c);
}

void ref_beam_topk(const float *lp, int64_t ld, const float *cum, int beam, int V, int k, float *values, int *ids)
{
    const int n = beam * V;
    cand *c = (cand *)malloc((size_t)n * sizeof(cand));
    for (int i = 0; i < beam; i++)
        for (int w = 0; w < V; w++) {
            const float v = lp[(int64_t)i * ld + w] + (cum ? cum[i] : 0.0f);
            c[i * V + w].key = ref_order_key(v);
            c[i * V + w].idx = i * V + w;
        }
    qsort(c, (size_t)n, sizeof(cand), cand_cmp);
    for (int i = 0; i < k; i++) {
        values[i] = ref_order_value(c[i].key);
        ids[i] = c[i].idx;
    }
    free(c);
}

void ref_update_logits(const float *x, const float *bias, int V, bool finished, int end_id, double temperature,
                       int mode, double *out)
{
    if (finished) {
        for (int j = 0; j < V; j++)
            out[j] = mode == 1 ? (j == end_id ? 1.0 : 0.0) : (j == end_id ? 0.0 : -INFINITY);
        return;
    }
    double m = -INFINITY;
    for (int j = 0; j < V; j++) {
        out[j] = ((double)x[j] + (bias ? (double)bias[j] : 0.0)) / temperature;
        if (out[j] > m)
            m = out[j];
    }
    if (mode == 0)
        return;
    double s = 0.0;
    for (int j = 0; j < V; j++)
        s += exp(out[j] - m);
    for (int j = 0; j < V; j++)
        out[j] = mode == 1 ? exp(out[j] - m) / s : out[j] - m - log(s);
}

double ref_sine_position(int pos, int i, int n)
{
    const int h = n / 2, j = i < h ? i : i - h;
    const double a = (double)pos * exp(-(double)j * log(10000.0) / (double)(h > 1 ? h - 1 : 1));
    return i < h ? sin(a) : cos(a);
}

int ref_topp_set(const float *x, int V, double temperature, double p, unsigned char *in, double *mass_frac)
{
    cand *c = (cand *)malloc((size_t)V * sizeof(cand));
    double m = -INFINITY;
    for (int i = 0; i < V; i++) {
        c[i].key = ref_order_key(x[i]);
        c[i].idx = i;
        c[i].value = x[i];
        if (x[i] > m)
            m = x[i];
    }
    qsort(c, (size_t)V, sizeof(cand), cand_cmp);
    double z = 0.0;
    for (int i = 0; i < V; i++)
        z += exp(((double)x[i] - m) / temperature);
    memset(in, 0, (size_t)V);
    double run = 0.0;
    int n = 0;
    for (int i = 0; i < V; i++) {
        run += exp(((double)c[i].value - m) / temperature);
        in[c[i].idx] = 1;
        n++;
        if (run >= p * z)
            break;
    }
    if (mass_frac)
        *mass_frac = run / z;
    free(c);
    return n;
}

void ref_set_probs(const float *x, int V, double temperature, const unsigned char *in, double *prob)
{
    double m = -INFINITY, z = 0.0;
    for (int i = 0; i < V; i++)
        if ((!in || in[i]) && x[i] > m)
            m = x[i];
    for (int i = 0; i < V; i++) {
        prob[i] = (!in || in[i]) ? exp(((double)x[i] - m) / temperature) : 0.0;
        z += prob[i];
    }
    for (int i = 0; i < V; i++)
        prob[i] /= z;
}

void ref_beam_update(const float *cand_values, const int *cand_ids, int beam, int V, int end_id, float *cum,
                     int *parent, int *word, int *lengths, bool *finished)
{
    int *len0 = (int *)malloc((size_t)beam * sizeof(int));
    bool *fin0 = (bool *)malloc((size_t)beam * sizeof(bool));
    memcpy(len0, lengths, (size_t)beam * sizeof(int));
    memcpy(fin0, finished, (size_t)beam * sizeof(bool));
    for (int i = 0; i < beam; i++) {
        const int c = cand_ids[i], pa = c / V, w = c % V;
        cum[i] = cand_values[i];
        parent[i] = pa;
        word[i] = w;
        lengths[i] = len0[pa] + (fin0[pa] ? 0 : 1);
        finished[i] = fin0[pa] || w == end_id;
    }
    free(len0);
    free(fin0);
}

double ref_chi2_critical(int df, double alpha)
{
    /* z for the upper tail alpha by bisection on erfc */
    double lo = 0.0, hi = 10.0;
    for (int it = 0; it < 100; it++) {
        const double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(mid / sqrt(2.0)) > alpha)
            lo = mid;
        else
            hi = mid;
    }
    const double z = 0.5 * (lo + hi), k = (double)df;
    const double t = 1.0 - 2.0 / (9.0 * k) + z * sqrt(2.0 / (9.0 * k));
    return k * t * t * t;
}
