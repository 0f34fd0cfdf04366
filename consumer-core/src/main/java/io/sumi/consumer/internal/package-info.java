/**
 * The consumer core's AOT hints (the executor's implementation is package-private in {@code io.sumi.consumer}, so the API package and this one never reach each other).
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (the others are package-private); application code must not use any of them.
 */
@NullMarked
package io.sumi.consumer.internal;

import org.jspecify.annotations.NullMarked;
