/*
 * control.h — If, Loop and Scan kept for run time (graph/control_rt.c).
 *
 * Such a node computes nothing in a kernel: the program runs it on the host
 * over child programs (api/). Its lowering is a placeholder kernel of no
 * workgroups whose buffers are the node's run-time inputs (read) and outputs
 * (written), so that the memory plan keeps them live and in planned memory
 * around it, and plan/commands.c puts an if/loop command in its place (an
 * empty function is emitted for it, never dispatched). Defined in ops/control.c.
 */
#ifndef SMELT_OPS_CONTROL_H
#define SMELT_OPS_CONTROL_H

#include "lower/lower.h"

smelt_status lower_control_host(struct lower_ctx *c);

#endif
