/**
 * Adapters from Spring Messaging types, for binders built on spring-messaging.
 */
@NullMarked
package io.sumi.consumer.messaging;

import org.jspecify.annotations.NullMarked;
