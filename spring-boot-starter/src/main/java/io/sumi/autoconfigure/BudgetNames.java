package io.sumi.autoconfigure;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * The budgets the application's {@code @IdempotentHandler} methods name, for the start-up checks:
 * every named budget configured (with sumi-budgets), or none named (without it). Names no type of
 * sumi-budgets, which is optional for the starter.
 */
final class BudgetNames {

    private BudgetNames() {}

    /** What is told of each handler method that names a budget. */
    @FunctionalInterface
    interface Visitor {
        void visit(String beanName, Method method, String budget);
    }

    /** Calls {@code visitor} for every handler method of every bean that names a budget. */
    static void forEachNamed(ConfigurableListableBeanFactory beanFactory, Visitor visitor) {
        for (String beanName : beanFactory.getBeanDefinitionNames()) {
            Class<?> type = beanFactory.getType(beanName, false);
            if (type == null) {
                continue;
            }
            Class<?> userClass = AopUtils.isAopProxy(type) ? type.getSuperclass() : ClassUtils.getUserClass(type);
            Map<Method, IdempotentHandler> methods =
                    MethodIntrospector.selectMethods(userClass, (MethodIntrospector.MetadataLookup<IdempotentHandler>)
                            m -> AnnotatedElementUtils.findMergedAnnotation(m, IdempotentHandler.class));
            for (Map.Entry<Method, IdempotentHandler> entry : methods.entrySet()) {
                String budget = entry.getValue().budget();
                if (!budget.isBlank()) {
                    visitor.visit(beanName, entry.getKey(), budget);
                }
            }
        }
    }
}
