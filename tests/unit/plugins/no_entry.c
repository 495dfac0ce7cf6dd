// SPDX-License-Identifier: MIT
/* A shared object without csd_plugin_entry: realize must refuse it. */
int not_a_plugin(void);

int not_a_plugin(void) { return 42; }
