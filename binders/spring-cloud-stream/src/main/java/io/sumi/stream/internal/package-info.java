/**
 * Implementation of the Spring Cloud Stream binder. Not API: may change in any release.
 */
@NullMarked
package io.sumi.stream.internal;

import org.jspecify.annotations.NullMarked;
