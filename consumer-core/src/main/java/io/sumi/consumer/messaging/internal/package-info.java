/**
 * What the binders built on spring-messaging share (batch listener arguments).
 *
 * <p>Not API: may change in any release. A type here is public only because a Sumi binder uses it;
 * application code must not use any of them.
 */
@NullMarked
package io.sumi.consumer.messaging.internal;

import org.jspecify.annotations.NullMarked;
