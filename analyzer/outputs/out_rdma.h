/* RDMA per connection, as text and JSON: the layout of `rdma`'s text and --json, over the
 * model's result; the command only asks for the model and picks one. */
#ifndef FLIGHTREC_OUT_RDMA_H
#define FLIGHTREC_OUT_RDMA_H

#include <stdio.h>

#include "model_rdma.h"

void out_rdma_text(const struct rdma_result *r, FILE *out);
void out_rdma_json(const struct rdma_result *r, FILE *out);

#endif
