/**
 * Implementation of the consumer core.
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (the others are package-private); application code must not use any of them.
 */
@NullMarked
package io.sumi.consumer.internal;

import org.jspecify.annotations.NullMarked;
