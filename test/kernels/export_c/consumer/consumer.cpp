// A C++ controller's use of an exported library: the header from C++, one gravity
// compensation, its answer printed for test_export_c.py to compare.
#include <cstdio>

#include "soa.h"

int main()
{
    double params[SOA_NUM_PARAMETERS], q[SOA_NUM_JOINTS], tau[SOA_NUM_JOINTS];
    soa_default_parameters(params);
    for (int k = 0; k < SOA_NUM_JOINTS; ++k)
        q[k] = 0.1 * (k + 1);
    soa_gravity_torques(params, q, tau);
    for (int k = 0; k < SOA_NUM_JOINTS; ++k)
        std::printf("%.17g\n", tau[k]);
    return 0;
}
