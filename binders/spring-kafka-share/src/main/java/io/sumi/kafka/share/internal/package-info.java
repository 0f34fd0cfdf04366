/**
 * Implementation of the share-group binder.
 *
 * <p>Not API: may change in any release. A type here is public only because Spring loads it
 * ({@code META-INF/spring/aot.factories}); application code must not use any of them.
 */
@NullMarked
package io.sumi.kafka.share.internal;

import org.jspecify.annotations.NullMarked;
