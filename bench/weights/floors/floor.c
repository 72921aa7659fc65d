/* floor.c MODE IN OUT [fold_bytes]: (4: as 3, the first pass through the mapping) the least work an apply to OUT does, CPU s (user+sys) incl. fsync.
 * 1: copy_file_range of IN whole (cp).  2: fold_bytes read by pread 1 MiB at a time, each f32
 * scaled (the vectorized kernel's loop), written; the rest copied by copy_file_range.  3: as 2,
 * with a first pass over fold_bytes for the largest magnitude (the plan-time bound). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/mman.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
static void scale(float *o, const float *in, size_t n, double s){
  enum{B=64}; size_t k=0; for(;k+B<=n;k+=B){float a[B],r[B];memcpy(a,in+k,sizeof a);for(int j=0;j<B;j++)r[j]=(float)((double)a[j]*s);memcpy(o+k,r,sizeof r);}
  for(;k<n;k++)o[k]=(float)((double)in[k]*s);}
static uint32_t maxbits(const uint32_t *p,size_t n){enum{B=64};uint32_t acc=0;size_t k=0;for(;k+B<=n;k+=B){uint32_t m=0;for(int j=0;j<B;j++){uint32_t a=p[k+j]&0x7fffffffu;m=a>m?a:m;}acc=m>acc?m:acc;}for(;k<n;k++){uint32_t a=p[k]&0x7fffffffu;acc=a>acc?a:acc;}return acc;}
static void cfr(int in,int out,off_t at,size_t len){loff_t a=at;while(len){ssize_t n=copy_file_range(in,&a,out,NULL,len,0);if(n<=0){perror("cfr");exit(1);}len-=n;}}
int main(int argc,char**argv){int mode=atoi(argv[1]);int in=open(argv[2],O_RDONLY);unlink(argv[3]);int out=open(argv[3],O_WRONLY|O_CREAT|O_TRUNC,0644);
 struct stat st;fstat(in,&st);size_t len=st.st_size,fold=argc>4?(size_t)atol(argv[4]):0;fold&=~(size_t)3;
 double c0=cpu();uint32_t acc=0;
 enum{CH=1<<20};float*b=malloc(CH),*o=malloc(CH);
 if(mode==1)cfr(in,out,0,len);
 else{ if(mode==4){unsigned char*m=mmap(NULL,len,PROT_READ,MAP_PRIVATE,in,0); for(size_t at=0;at<fold;at+=8<<20){size_t n=fold-at<(8<<20)?fold-at:(8<<20);acc|=maxbits((uint32_t*)(m+at),n/4);madvise(m+at,(n+4095)&~4095UL,MADV_DONTNEED);} munmap(m,len);}
   if(mode==3) for(size_t at=0;at<fold;at+=CH){size_t n=fold-at<CH?fold-at:CH;pread(in,b,n,at);acc|=maxbits((uint32_t*)b,n/4);}
   for(size_t at=0;at<fold;at+=CH){size_t n=fold-at<CH?fold-at:CH;pread(in,b,n,at);scale(o,b,n/4,0.731);if(write(out,o,n)!=(ssize_t)n)return 1;}
   cfr(in,out,fold,len-fold);}
 double c1=cpu();fsync(out);double c2=cpu();close(out);unlink(argv[3]);
 printf("mode %d: %.1f MB (%.1f MB folded) cpu %.3f (fsync %.3f) %x\n",mode,len/1e6,fold/1e6,c2-c0,c2-c1,acc);}
