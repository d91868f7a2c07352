-- The slices of rids that hold calls bloat/content.sql left to bloat/content_rest.sql (NULL or no roles).
SELECT DISTINCT rid // $slice * $slice FROM _content WHERE roles IS NULL OR len(roles) = 0 ORDER BY 1;
