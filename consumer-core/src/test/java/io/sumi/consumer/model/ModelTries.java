package io.sumi.consumer.model;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * How many sequences each model property of a class tries by default. The system property
 * {@value #SYSTEM_PROPERTY} overrides it for every class ({@code ./mvnw ... -Dsumi.model.tries=2000}).
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@Inherited
@interface ModelTries {

    String SYSTEM_PROPERTY = "sumi.model.tries";

    int value();

    /** Applies {@link ModelTries} (or the system property) to each property. */
    final class Hook implements AroundPropertyHook {

        @Override
        public PropagationMode propagateTo() {
            return PropagationMode.ALL_DESCENDANTS;
        }

        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
            ModelTries tries = context.containerClass().getAnnotation(ModelTries.class);
            Integer override = Integer.getInteger(SYSTEM_PROPERTY);
            if (override != null) {
                context.attributes().setTries(override);
            }
            else if (tries != null) {
                context.attributes().setTries(tries.value());
            }
            return property.execute();
        }
    }
}
