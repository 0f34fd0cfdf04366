/** How the kit observes deliveries and wires itself into a Spring test context. Not an API. */
@NullMarked
package io.sumi.test.internal;

import org.jspecify.annotations.NullMarked;
