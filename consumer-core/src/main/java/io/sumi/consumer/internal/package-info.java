/**
 * Implementation of the consumer core. Not API: may change in any release.
 */
@NullMarked
package io.sumi.consumer.internal;

import org.jspecify.annotations.NullMarked;
